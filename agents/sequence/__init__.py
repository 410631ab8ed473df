"""Next-action prediction from the history (`seq:`): the agent, the history encoding shared with
features.encode (codec), and each family's predictor (predictor's contract; crf, hmm)."""
