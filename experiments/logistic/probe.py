"""Timing inside a bomcmc run, in this process only: when each phase of a run starts and
ends, the compiled chunks' own seconds, and the AHMC tuner's host seconds (GP fits,
acquisition maximisation, the rest), by wrapping the library's methods."""

from __future__ import annotations

import time


class Probe:
    """Wraps (in this process only) bomcmc's chunk dispatch and the GP bandit's methods to
    time, for the current run: when each phase starts and ends, the compiled chunks'
    own time, and the tuner's host time. `reset()` before each run."""

    def __init__(self):
        self.reset()
        self._install()

    def reset(self):
        self.chunk_starts: list[tuple[float, int]] = []  # (perf_counter, start_iter)
        self.chunk_walls = {0: 0.0, 1: 0.0}  # compiled chunk seconds per phase
        self.execute_end = None
        self.warmup = None
        self.after_chunk = {0: 0.0, 1: 0.0}  # tuner.after_chunk seconds per phase
        self.n_after_chunk = {0: 0, 1: 0}
        self.gp_fit = 0.0  # GaussianProcess.add + the Cholesky factorisations (_factor)
        self.propose = 0.0  # bandit.propose (DIRECT + L-BFGS-B), its _factor excluded
        self.n_propose = 0
        self._in_propose = False
        self._factor_in_propose = 0.0

    def _install(self):
        from bomcmc.driver import api as brun
        from bomcmc.driver import engine
        from bomcmc.tuning.ahmc_tuner import AHMCTuner
        from bomcmc.tuning.gp import GaussianProcess
        from bomcmc.tuning import bandit

        probe = self
        pc = time.perf_counter

        orig_run_chunk = engine.Run.run_chunk

        def run_chunk(run, states, knobs, adapt_state, start_iter, n_draws, thin):
            probe.warmup = run.spec.warmup
            t0 = pc()
            probe.chunk_starts.append((t0, int(start_iter)))
            out = orig_run_chunk(run, states, knobs, adapt_state, start_iter, n_draws, thin)
            probe.chunk_walls[int(start_iter >= run.spec.warmup)] += pc() - t0
            return out

        engine.Run.run_chunk = run_chunk

        orig_execute = brun.execute

        def execute(*a, **k):
            try:
                return orig_execute(*a, **k)
            finally:
                probe.execute_end = pc()

        brun.execute = execute  # sample() looks the global up at call time

        orig_after = AHMCTuner.after_chunk

        def after_chunk(tuner, knobs, chunk):
            t0 = pc()
            try:
                return orig_after(tuner, knobs, chunk)
            finally:
                ph = int(chunk.get("phase", 0))
                probe.after_chunk[ph] += pc() - t0
                probe.n_after_chunk[ph] += 1

        AHMCTuner.after_chunk = after_chunk

        orig_propose = bandit.propose  # the tuners call it through the module

        def propose(*a, **k):
            t0 = pc()
            probe._in_propose, probe._factor_in_propose = True, 0.0
            try:
                return orig_propose(*a, **k)
            finally:
                probe._in_propose = False
                probe.propose += pc() - t0 - probe._factor_in_propose
                probe.n_propose += 1

        bandit.propose = propose

        orig_add, orig_factor = GaussianProcess.add, GaussianProcess._factor

        def add(gp, x, r):
            t0 = pc()
            try:
                return orig_add(gp, x, r)
            finally:
                probe.gp_fit += pc() - t0

        def factor(gp):
            t0 = pc()
            try:
                return orig_factor(gp)
            finally:
                dt = pc() - t0
                probe.gp_fit += dt
                if probe._in_propose:
                    probe._factor_in_propose += dt

        GaussianProcess.add, GaussianProcess._factor = add, factor

    def phases(self) -> dict:
        """Warm-up and sampling walls, dispatch to dispatch (host work between chunks
        included; compilation and the initial state excluded)."""
        if not self.chunk_starts or self.execute_end is None:
            return {}
        t_first = self.chunk_starts[0][0]
        samp = [t for t, it in self.chunk_starts if it >= self.warmup]
        t_samp = samp[0] if samp else self.execute_end
        return {"warmup_phase_s": t_samp - t_first, "sampling_phase_s": self.execute_end - t_samp,
                "chunk_s_warmup": self.chunk_walls[0], "chunk_s_sampling": self.chunk_walls[1],
                "n_chunks": len(self.chunk_starts)}

    def tuner(self) -> dict:
        total = self.after_chunk[0] + self.after_chunk[1]
        return {"total_s": total, "warmup_s": self.after_chunk[0],
                "sampling_s": self.after_chunk[1], "gp_fit_s": self.gp_fit,
                "acquisition_s": self.propose,
                "other_s": total - self.gp_fit - self.propose,  # rewards, Welford, bookkeeping
                "bo_steps": self.n_after_chunk[0] + self.n_after_chunk[1],
                "proposals": self.n_propose,
                "per_proposal_ms": (1e3 * (self.propose + self.gp_fit) / self.n_propose
                                    if self.n_propose else None)}
