//! The same events of a trace parsed three ways: serde_json (derived, raw values borrowed),
//! sonic-rs (the same derive, its LazyValue for raw values), tracegate's reader::fast.
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::io::Read;
use std::time::Instant;
mod reader;

#[derive(Deserialize)]
struct JArgs<'a> {
    #[serde(rename = "External id", borrow)]
    external_id: Option<&'a RawValue>,
    #[serde(borrow)]
    correlation: Option<&'a RawValue>,
    #[serde(borrow)]
    stream: Option<&'a RawValue>,
    #[serde(borrow)]
    device: Option<&'a RawValue>,
    #[serde(borrow)]
    grid: Option<&'a RawValue>,
    #[serde(borrow)]
    block: Option<&'a RawValue>,
    #[serde(rename = "Input Dims", borrow)]
    input_dims: Option<&'a RawValue>,
    #[serde(rename = "Input type", borrow)]
    input_type: Option<&'a RawValue>,
}
#[derive(Deserialize)]
struct JEvent<'a> {
    #[serde(borrow)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pid: Option<&'a RawValue>,
    #[serde(borrow)]
    tid: Option<&'a RawValue>,
    #[serde(borrow)]
    ts: Option<&'a RawValue>,
    #[serde(borrow)]
    dur: Option<&'a RawValue>,
    #[serde(borrow)]
    args: Option<JArgs<'a>>,
}
#[derive(Deserialize)]
struct SArgs<'a> {
    #[serde(rename = "External id", borrow)]
    external_id: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow)]
    correlation: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow)]
    stream: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow)]
    device: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow)]
    grid: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow)]
    block: Option<sonic_rs::LazyValue<'a>>,
    #[serde(rename = "Input Dims", borrow)]
    input_dims: Option<sonic_rs::LazyValue<'a>>,
    #[serde(rename = "Input type", borrow)]
    input_type: Option<sonic_rs::LazyValue<'a>>,
}
#[derive(Deserialize)]
struct SEvent<'a> {
    #[serde(borrow)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cat: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pid: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow)]
    tid: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow)]
    ts: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow)]
    dur: Option<sonic_rs::LazyValue<'a>>,
    #[serde(borrow)]
    args: Option<SArgs<'a>>,
}

fn events(json: &[u8]) -> Vec<&[u8]> {
    let start = json
        .windows(13)
        .position(|w| w == b"\"traceEvents\"")
        .expect("traceEvents")
        + 13;
    let start = start + json[start..].iter().position(|&b| b == b'[').unwrap() + 1;
    let mut out = Vec::new();
    let mut at = start;
    loop {
        while matches!(json.get(at), Some(b' ' | b'\n' | b',')) {
            at += 1;
        }
        if json.get(at) != Some(&b'{') {
            break;
        }
        let mut it =
            serde_json::Deserializer::from_slice(&json[at..]).into_iter::<serde::de::IgnoredAny>();
        match it.next() {
            Some(Ok(_)) => {}
            _ => break,
        }
        let end = at + it.byte_offset();
        out.push(&json[at..end]);
        at = end;
    }
    out
}

fn time<F: FnMut() -> usize>(label: &str, bytes: usize, mut f: F) -> f64 {
    let mut best = f64::MAX;
    let mut check = 0;
    for _ in 0..5 {
        let t = Instant::now();
        check = f();
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{label:<28} {:>7.1} ms  {:>6.0} MB/s  (fields seen {check})",
        best * 1e3,
        bytes as f64 / best / 1e6
    );
    best
}

fn main() {
    let path = std::env::args().nth(1).expect("a .json.gz");
    let mb: usize = std::env::args().nth(2).map_or(200, |s| s.parse().unwrap());
    let mut json = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(&path).unwrap())
        .take((mb << 20) as u64)
        .read_to_end(&mut json)
        .unwrap();
    let evs = events(&json);
    let bytes: usize = evs.iter().map(|e| e.len()).sum();
    println!(
        "{} events, {:.1} MB of event JSON",
        evs.len(),
        bytes as f64 / 1e6
    );
    let serde = time("serde_json (derive)", bytes, || {
        evs.iter()
            .map(|e| {
                let ev: JEvent = serde_json::from_slice(e).unwrap();
                ev.ts.is_some() as usize + ev.args.map_or(0, |a| a.correlation.is_some() as usize)
            })
            .sum()
    });
    let sonic = time("sonic-rs (derive)", bytes, || {
        evs.iter()
            .map(|e| {
                let ev: SEvent = sonic_rs::from_slice(e).unwrap();
                ev.ts.is_some() as usize + ev.args.map_or(0, |a| a.correlation.is_some() as usize)
            })
            .sum()
    });
    let lazy = time("sonic-rs (to_object_iter)", bytes, || {
        evs.iter()
            .map(|e| {
                let (mut n, mut ph, mut cat, mut name) = (0usize, None, None, None);
                let (mut pid, mut tid, mut ts, mut dur) = (None, None, None, None);
                for kv in sonic_rs::to_object_iter(*e) {
                    let (k, v) = kv.unwrap();
                    match &*k {
                        "ph" => ph = Some(v),
                        "cat" => cat = Some(v),
                        "name" => name = Some(v),
                        "pid" => pid = Some(v),
                        "tid" => tid = Some(v),
                        "ts" => {
                            n += 1;
                            ts = Some(v)
                        }
                        "dur" => dur = Some(v),
                        "args" => {
                            for kv in sonic_rs::to_object_iter(v.as_raw_str()) {
                                let (k, v) = kv.unwrap();
                                if &*k == "correlation" {
                                    n += 1;
                                }
                                std::hint::black_box(v.as_raw_str());
                            }
                        }
                        _ => {}
                    }
                }
                std::hint::black_box((ph, cat, name, pid, tid, ts, dur));
                n
            })
            .sum()
    });
    let fast = time("tracegate reader::fast", bytes, || {
        evs.iter()
            .map(|e| {
                let mut ev = reader::event::RawEvent::default();
                reader::fast::parse_event(e, &mut ev).unwrap();
                ev.ts.is_some() as usize + ev.args.map_or(0, |a| a.correlation.is_some() as usize)
            })
            .sum()
    });
    println!("sonic-rs lazy / serde_json: {:.2}", lazy / serde);
    println!("sonic-rs / serde_json time: {:.2}; reader::fast / serde_json: {:.2}; reader::fast / sonic-rs: {:.2}", sonic / serde, fast / serde, fast / sonic);
}
