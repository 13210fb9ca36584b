//! Audit of a training run's checkpoint directory.
