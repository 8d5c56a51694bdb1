//! `cargo lockaudit …`: cargo finds `cargo-lockaudit` on the `PATH` and runs
//! it with `lockaudit` as the first argument; everything else is the same
//! program as `lockaudit`.

fn main() -> std::process::ExitCode {
    lockaudit::app::main(true).into()
}
