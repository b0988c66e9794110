"""The tools on top: the command line (cli), the offline render (render), the diff (diff), the
rehearsal on real Kafka and Connect (rehearsal) and the audit's generated sample (sample)."""
