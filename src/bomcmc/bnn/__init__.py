"""Bayesian neural networks, the flagship application: the network and Neal's hierarchical
priors (`network`, `groups`, `priors`, `gibbs`), K-fold cross-validation networks (`cv`),
prediction and pre-training, the samplers built for a network (`samplers`), the estimator
(`estimator`) and Choo's data (`choo_data`). Nothing in the core imports this package."""
