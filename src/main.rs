fn main() {
    let cli = tracegate::cli::Cli::parse_args();
    let status = match tracegate::cli::run(cli) {
        Ok(status) => status,
        Err(e) => {
            eprintln!("tracegate: error: {e:#}");
            tracegate::exit::CANNOT_JUDGE
        }
    };
    std::process::exit(status);
}
