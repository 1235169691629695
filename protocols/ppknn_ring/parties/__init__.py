"""PP-kNN parties: the ring data owners."""
