//! ratelab: parse, run, print the error chain, set the exit code. Nothing else.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = ratelab::cli::Cli::parse();
    match ratelab::app::execute(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("ratelab: error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}
