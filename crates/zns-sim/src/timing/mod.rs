//! Timing model: being written.
