"""Protocol-independent machinery of ppknn: messages, channels, transcript,
leakage measurement, runtimes, randomness, data and differential privacy."""
