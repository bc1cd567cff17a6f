//! Extraction (placeholder until the safe extractor lands).
