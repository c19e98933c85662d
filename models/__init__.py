"""The embedder bundle (manifest and tokenizer), installed as the package memory_console.models."""
