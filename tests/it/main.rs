//! The end-to-end tests, in one binary: one link instead of one per file, and runs that several
//! test files need are generated once (`common::synth_run`).

mod common;

mod action;
mod bad_input;
mod bounded;
mod calibrate;
mod chart;
mod check;
mod check_output;
mod comment;
mod configuration;
mod confinement;
mod demo;
mod extract_truth;
mod fuzz;
mod gate_integrity;
mod gfm;
mod github;
mod guide;
mod hostile;
mod identity;
mod inspect;
mod install;
mod integrity;
mod loops;
mod names;
mod partial_ranks;
mod producers;
mod properties;
mod real_baselines;
mod real_traces;
mod real_verdicts;
mod reference_tables;
mod renamed;
mod render;
mod report;
mod same_figures;
mod speculative;
mod sweep;
mod threads;
mod unbounded;
mod unclassified;
mod untrusted;
mod verdict_log;
mod versions;
