//! Kernel taxonomy: maps each GPU activity name to a category by an ordered rule table
//! (first match wins), shipped in the binary as `rules.toml` and extendable by the user.
//!
//! Interface fixed by the lead; the rule table and matcher are filled in by the taxonomy work.

use serde::{Deserialize, Serialize};

/// What a GPU activity does, as far as the gate cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Comm,
    MoeGemm,
    DenseGemm,
    Attention,
    MoeRouting,
    Norm,
    Quant,
    Elementwise,
    Memcpy,
    Other,
}

/// The collective a `comm` kernel performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Collective {
    Allreduce,
    Allgather,
    ReduceScatter,
    AllToAll,
    SendRecv,
    Broadcast,
    /// A generic kernel whose collective the name does not tell (`rcclGenericKernel`).
    Other,
}

/// The classification of one kernel name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Class {
    pub category: Category,
    /// Set for `comm` kernels only.
    pub collective: Option<Collective>,
    /// What the kernel is, in words, for reports ("flashinfer oneshot lamport allreduce").
    pub note: Option<String>,
}
