fn main() {
    let cli = tracegate::cli::Cli::parse_args();
    let status = match tracegate::cli::run(cli) {
        Ok(status) => status,
        Err(e) => {
            // Never a panic when stderr cannot be written: the status is the answer.
            tracegate::cli::print_error(&e);
            tracegate::exit::CANNOT_JUDGE
        }
    };
    std::process::exit(status);
}
