"""What sparkbalance did: one balance record and log line per plan, kept in a bounded log and
pushed to the Spark UI plugin when it is loaded."""
