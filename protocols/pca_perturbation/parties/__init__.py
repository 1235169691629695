"""PCA + Laplace parties: the sanitizer and the miner."""
