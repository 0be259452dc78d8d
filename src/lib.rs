//! tracegate: reads the PyTorch-profiler (Kineto) traces of an LLM inference profile run, extracts
//! the figures that matter and gates them against a per-hardware baseline.
//!
//! The pipeline runs one way: [`reader`] → [`taxonomy`] → [`steps`] → [`metrics`] → [`gate`] →
//! [`report`]. Only the reader sees JSON; only the report formats.

pub mod analysis;
pub mod baseline;
pub mod cli;
pub mod exit;
pub mod gate;
pub mod github;
pub mod inspect;
pub mod links;
pub mod metrics;
pub mod pipeline;
pub mod reader;
pub mod report;
pub mod shapes;
pub mod stats;
pub mod steps;
pub mod sweep;
pub mod synth;
pub mod taxonomy;
pub mod units;

#[cfg(test)]
mod testing;
