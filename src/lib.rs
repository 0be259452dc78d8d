//! tracegate: reads the PyTorch-profiler (Kineto) traces of an LLM inference profile run, extracts
//! the figures that matter and gates them against a per-hardware baseline.
//!
//! The pipeline runs one way: [`reader`] → taxonomy → steps → metrics → gate → report.
//! Only the reader sees JSON.

pub mod exit;
pub mod reader;
pub mod synth;
pub mod taxonomy;
