"""Tagging with a trained model: the Tagger, file tagging, scoring against gold, ranking
documents for review, uncertainty and speed. It never imports training."""
