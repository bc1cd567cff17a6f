fn main() -> std::process::ExitCode {
    qtar::tar::main(std::env::args_os().collect())
}
