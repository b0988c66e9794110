"""Topic and group filters as Kafka reads them: the Java-regex engine (jregex) and the filter
algebra built on it (topics: matching, overlaps, differences with shortest examples)."""
