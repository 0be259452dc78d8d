fn main() {
    std::process::exit(tracegate::run_cli());
}
