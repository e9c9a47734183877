"""The command line: `main` (parser, dispatch, one-line errors), `commands` (sample, resume,
summary, posteriors), `bnn` (bnn fit / predict, demo) and `demo` (the robot-arm network)."""
