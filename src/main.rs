use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = lockaudit::cli::Cli::parse();
    lockaudit::app::run(cli).into()
}
