"""Protocol-independent machinery of ppknn.

Messages, channels, transcript, leakage measurement, runtimes, randomness,
data and differential privacy.
"""
