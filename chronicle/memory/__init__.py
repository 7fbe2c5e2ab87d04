"""Distilled memories: the shared model, embeddings, and search scoring."""
