"""The offline preview: the real program under a recording mock engine, then the policy pack."""
