"""The built-in protocols' registrations (one module each; see :mod:`simulations.registry`)."""
