"""The keyed state's durability: checkpoints committed by a manifest, verified state files, the
store (local or Hadoop), the owner lease, and rollback of a batch whose commit failed."""
