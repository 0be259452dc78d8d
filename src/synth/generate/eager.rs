//! The decode loop of an eager serving loop (vLLM `--enforce-eager`, SGLang `--disable-cuda-graph`)
//! and of vLLM's piecewise CUDA graphs: no step annotation, no graph that holds a whole forward,
//! no host sync the tool could lean on; forward passes are told apart only by the idle GPU time the
//! scheduler leaves between them (drawn per step, log-uniform), and a prefill comes every few steps.

use super::*;
use crate::synth::scenario::EagerLoop;

/// Sequences per decode batch (the M of every decode GEMM).
const BATCH: u32 = 64;

impl Gen<'_> {
    /// Decode steps (with a prefill every `e.prefill_every`) from `t`; `prefill` is the first
    /// prefill, replayed (shifted) for the later ones.
    pub(super) fn eager_decode(
        &mut self,
        e: EagerLoop,
        mut t: u64,
        prefill: &[Placed],
        steps: &mut Vec<StepSummary>,
    ) -> Result<(), SynthError> {
        let p = self.plan;
        let rank = self.rank;
        let ops = &p.decode_ops;
        let two = p.two_streams();
        let nom: Vec<f64> = ops.iter().map(|o| p.nominal(o.spec, rank)).collect();
        let nom_ns: Vec<u64> = nom.iter().map(|&d| d.round() as u64).collect();
        let weights: Vec<f64> = ops.iter().map(|o| o.w).collect();
        let unit = solve_unit(ops, &p.specs, &nom_ns, &weights, two, p.tune(rank).wall_ns);
        let mut placed = Vec::with_capacity(ops.len());
        for step in 0..p.n_decode {
            if step > 0 && step % e.prefill_every == 0 {
                t = self.replay_prefill(prefill, t, steps)? + self.step_gap(e);
            }
            let durs: Vec<u64> = ops
                .iter()
                .enumerate()
                .map(|(i, o)| self.dur(o.spec, nom[i]))
                .collect();
            let gaps: Vec<u64> = weights
                .iter()
                .enumerate()
                .map(|(i, w)| match i {
                    0 => 0,
                    _ => (unit * w * self.rng.jitter(0.5 / w.max(1.0).sqrt())).round() as u64,
                })
                .collect();
            placed.clear();
            schedule(ops, &p.specs, &durs, &gaps, two, t, &mut placed);
            let (cpu0, cpu1) = if e.piecewise {
                self.piecewise(&placed)?
            } else {
                self.eager(&placed, BATCH, 0)?
            };
            self.python(cpu0.saturating_sub(60 * US), cpu1 + 20 * US, false)?;
            steps.push(self.summary(StepKind::Decode, &placed));
            t = placed.iter().map(|k| k.ts + k.dur).max().unwrap_or(t) + self.step_gap(e);
        }
        Ok(())
    }

    /// Idle GPU time before the next forward: log-uniform in the loop's range.
    fn step_gap(&mut self, e: EagerLoop) -> u64 {
        let (lo, hi) = (e.gap_min_ns as f64, e.gap_max_ns as f64);
        (lo * (hi / lo).powf(self.rng.unit())).round() as u64
    }

    /// The first prefill again from `t` (eager, M = its tokens); returns its end.
    fn replay_prefill(
        &mut self,
        prefill: &[Placed],
        t: u64,
        steps: &mut Vec<StepSummary>,
    ) -> Result<u64, SynthError> {
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
        steps.push(self.summary(StepKind::Prefill, &shifted));
        Ok(shifted.iter().map(|k| k.ts + k.dur).max().unwrap_or(t))
    }

    /// vLLM piecewise graphs: attention kernels launched eagerly, the kernels between two
    /// attention calls replayed as one graph launch each.
    fn piecewise(&mut self, placed: &[Placed]) -> Result<(u64, u64), SynthError> {
        let (mut first, mut last) = (u64::MAX, 0);
        let is_attention = |k: &Placed| self.plan.specs[k.spec].cat == "attention";
        for piece in placed.chunk_by(|a, b| is_attention(a) == is_attention(b)) {
            let (a, b) = if is_attention(&piece[0]) {
                self.eager(piece, BATCH, 0)?
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
        let (rt_name, id_key, id) = if self.amd() {
            ("hipGraphLaunch", "cid", 215)
        } else {
            ("cudaGraphLaunch", "cbid", 311)
        };
        let args = format!(r#"{{"{id_key}":{id},"correlation":{corr}}}"#);
        let pid = self.host.pid;
        self.x(
            "cuda_runtime",
            rt_name_json(rt_name),
            pid,
            pid,
            launch_ts,
            launch_dur,
            &args,
        )?;
        for k in piece {
            self.kernel(k, corr, None)?;
        }
        Ok((launch_ts, launch_ts + launch_dur))
    }
}
