fn main() {
    println!("tracegate");
}
