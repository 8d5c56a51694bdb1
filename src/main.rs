fn main() -> std::process::ExitCode {
    lockaudit::app::main(false).into()
}
