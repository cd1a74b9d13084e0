"""``sb.diagnose``: is a keyed job skewed, and which placement would help (no data shuffled)."""
