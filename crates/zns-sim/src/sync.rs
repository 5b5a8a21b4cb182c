//! Sync primitives: being written.
