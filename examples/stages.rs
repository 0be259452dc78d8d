use std::io::Read;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let t = std::time::Instant::now();
    let f = std::fs::File::open(&path).unwrap();
    let mut d = flate2::read::MultiGzDecoder::new(std::io::BufReader::with_capacity(1 << 16, f));
    let mut buf = vec![0u8; 1 << 18];
    let mut n = 0usize;
    loop {
        let k = d.read(&mut buf).unwrap();
        if k == 0 {
            break;
        }
        n += k;
    }
    let dec = t.elapsed();
    let t = std::time::Instant::now();
    let r = tracegate::reader::read_file(std::path::Path::new(&path)).unwrap();
    let full = t.elapsed();
    println!(
        "{} MB: decompress {:?} ({:.0} MB/s), read_file {:?} ({:.0} MB/s), kernels {}",
        n / 1_000_000,
        dec,
        n as f64 / 1e6 / dec.as_secs_f64(),
        full,
        n as f64 / 1e6 / full.as_secs_f64(),
        r[0].gpu.len()
    );
}
