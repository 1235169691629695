# examples/dp_count/src/dp_count/__init__.py
"""``dp-count``: an ε-DP protocol for ppknn, outside ppknn (the "Writing a protocol" tutorial).

ppknn finds it through the ``ppknn.protocols`` entry point of this package
(``dp_count.plugin:DPCount``); nothing here is imported before it asks.
"""
