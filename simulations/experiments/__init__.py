"""IBM diffprivlib's GaussianNB on the same folds, in its own virtual environment.

The experiments behind the reproductions are :mod:`ppknn_reproductions.experiments`.
"""
