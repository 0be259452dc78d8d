//! The decode loop of an eager serving loop (vLLM `--enforce-eager`, SGLang `--disable-cuda-graph`)
//! and of vLLM's piecewise CUDA graphs: no step annotation, no graph that holds a whole forward,
//! no host sync the tool could lean on; forward passes are told apart only by the idle GPU time the
//! scheduler leaves between them (drawn per step, log-uniform), and a prefill comes every few steps.
//! The ranks still wait for each other in every collective: the steps are placed by `DecodeSim`.

use super::*;
use crate::synth::scenario::EagerLoop;

/// Sequences per decode batch (the M of every decode GEMM).
pub(super) const BATCH: u32 = 64;

/// Every rank's decode steps (with a prefill every `e.prefill_every`), placed together by `sim` as
/// in a graph run (ranks wait for each other in every collective) but launched eagerly, with the
/// scheduler's idle time between forward passes: the same on every rank, drawn per step.
pub(super) fn decode_all(
    gens: &mut [Gen<'_>],
    sim: &mut DecodeSim<'_>,
    e: EagerLoop,
) -> Result<(), SynthError> {
    for step in 0..sim.plan.n_decode {
        if step > 0 && step % e.prefill_every == 0 {
            let t = sim.next;
            let ends = gens
                .par_iter_mut()
                .map(|g| g.replay_prefill(t))
                .collect::<Result<Vec<u64>, SynthError>>()?;
            sim.next = ends.into_iter().max().unwrap_or(t) + step_gap(&mut sim.shared, e);
        }
        let (placed, _) = sim.step(step);
        gens.par_iter_mut()
            .zip(placed.par_iter())
            .try_for_each(|(g, p)| g.eager_step(e, p))?;
        let end = placed
            .iter()
            .flatten()
            .map(|k| k.ts + k.dur)
            .max()
            .unwrap_or(sim.next);
        sim.next = end + step_gap(&mut sim.shared, e) + sim.plan.host_gap_ns;
    }
    Ok(())
}

/// Idle GPU time before the next forward: log-uniform in the loop's range.
fn step_gap(rng: &mut Rng, e: EagerLoop) -> u64 {
    let (lo, hi) = (e.gap_min_ns as f64, e.gap_max_ns as f64);
    (lo * (hi / lo).powf(rng.unit())).round() as u64
}

impl Gen<'_> {
    /// One decode forward of this rank, launched kernel by kernel (or piecewise).
    fn eager_step(&mut self, e: EagerLoop, placed: &[Placed]) -> Result<(), SynthError> {
        let (cpu0, cpu1) = if e.piecewise {
            self.piecewise(placed)?
        } else {
            self.eager_at(placed, BATCH, 0, Some(0))?
        };
        self.python(cpu0.saturating_sub(60 * US), cpu1 + 20 * US, false)?;
        let summary = self.summary(StepKind::Decode, placed);
        self.steps.push(summary);
        Ok(())
    }

    /// The first prefill again from `t` (eager, M = its tokens); returns its end.
    fn replay_prefill(&mut self, t: u64) -> Result<u64, SynthError> {
        let prefill = std::mem::take(&mut self.first_prefill);
        let start = prefill.iter().map(|k| k.ts).min().unwrap_or(t);
        let shifted: Vec<Placed> = prefill
            .iter()
            .map(|k| Placed {
                ts: k.ts - start + t,
                ..*k
            })
            .collect();
        let (cpu0, cpu1) = self.eager(&shifted, self.plan.sc.prefill.toks, 0)?;
        self.python(cpu0.saturating_sub(60 * US), cpu1 + 20 * US, true)?;
        let summary = self.summary(StepKind::Prefill, &shifted);
        self.steps.push(summary);
        self.first_prefill = prefill;
        Ok(shifted.iter().map(|k| k.ts + k.dur).max().unwrap_or(t))
    }

    /// vLLM piecewise graphs: attention kernels launched eagerly, the kernels between two
    /// attention calls replayed as one graph launch each.
    fn piecewise(&mut self, placed: &[Placed]) -> Result<(u64, u64), SynthError> {
        let (mut first, mut last) = (u64::MAX, 0);
        let is_attention = |k: &Placed| self.plan.specs[k.spec].cat == "attention";
        // The piece's place among the decode ops, for its layer.
        let mut at = 0;
        for piece in placed.chunk_by(|a, b| is_attention(a) == is_attention(b)) {
            at += piece.len();
            let (a, b) = if is_attention(&piece[0]) {
                self.eager_at(piece, BATCH, 0, Some(at - piece.len()))?
            } else {
                self.graph_piece(piece)?
            };
            first = first.min(a);
            last = last.max(b);
        }
        Ok((first, last))
    }

    /// One graph launch whose kernels all carry its correlation.
    fn graph_piece(&mut self, piece: &[Placed]) -> Result<(u64, u64), SynthError> {
        self.host.corr += 1;
        let corr = self.host.corr;
        let launch_ts = piece[0].ts.saturating_sub(8 * US);
        let launch_dur = 5 * US;
        self.graph_launch(corr, launch_ts, launch_dur)?;
        for k in piece {
            self.kernel(k, corr, None)?;
        }
        Ok((launch_ts, launch_ts + launch_dur))
    }
}
