"""The keyed state's data: its byte format, blocks and the window fold, the merge of a batch,
moves between partitions, and the frame RDDs that hold it."""
