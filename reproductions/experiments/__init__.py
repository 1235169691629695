"""Experiment code behind the reproductions and benchmarks (one module per protocol).

Modules
-------
ring
    PP-kNN: many random splits of a dataset in one protocol run.
dp_knn
    DP r-N / k-NN (Gursoy et al.): datasets and one cross-validation fold through a runtime.
dp_nb
    DP Naive Bayes (Zafarani & Clifton): cross-validated accuracy and training time.
zafarani
    The DP Naive Bayes reproduction's runs: accuracy, diffprivlib side by side, widened
    bounds, training time, the privacy audit, the model-release service and the
    breast_cancer peer comparison (a scenario grid through the ``dp-nb`` plugin).
diffprivlib_peer
    IBM diffprivlib's GaussianNB on the same folds, in its own virtual environment.
dptt_session, dptt_evaluation, dptt_sweeps
    DP-TT (Lepert): a runtime for many batches, the measured rows and the experiment grid.
pca, pca_evaluation, pca_timing
    PCA + Laplace perturbation (Mukherjee et al.): the paper's experiments as scenario grids,
    one repetition through the parties and the transcript, and the execution-time study.

Protocol packages (:mod:`ppknn.protocols`) hold the protocols themselves; the
claims checked against these measurements sit with the reproductions
(:mod:`ppknn_reproductions`).
"""
