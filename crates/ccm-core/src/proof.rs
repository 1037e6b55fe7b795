//! Scripted proof runs (to be written).
