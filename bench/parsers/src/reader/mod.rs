pub mod event;
// tracegate's own fast path, compiled here as it is in the reader.
#[allow(dead_code)]
#[path = "../../../../src/reader/fast.rs"]
pub mod fast;
