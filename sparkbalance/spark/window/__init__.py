"""Window functions over skewed partition keys, split exactly (``with_window_columns``).

``spec`` reads a window Column (classic and Spark Connect), ``frames`` says how each
function is split and corrected, ``segments`` cuts hot keys into ranges of the order key and
places them, ``halo`` replicates the neighbouring rows bounded frames reach, ``windows``
runs it all in one exchange per partitioning.
"""
