//! ratelab: parse, run, print the error chain, set the exit code. Nothing else.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match ratelab::cli::Cli::try_parse() {
        Ok(cli) => cli,
        // clap's own tip for an unknown option (`-- --trails`) points the wrong way.
        Err(err) if err.kind() == clap::error::ErrorKind::UnknownArgument => {
            eprintln!("{}", ratelab::cli::unknown_option(&err));
            return ExitCode::from(2);
        }
        Err(err) => err.exit(),
    };
    match ratelab::app::execute(cli) {
        Ok(()) => ExitCode::SUCCESS,
        // The run failed because the interrupt handler was stopping its servers: exit as it does.
        Err(_) if ratelab::server::interrupted() => ExitCode::from(130),
        // `check` says what failed as it goes: its end is one line and its own exit code.
        Err(err) if err.downcast_ref::<ratelab::check::CheckEnd>().is_some() => {
            let code = err
                .downcast_ref::<ratelab::check::CheckEnd>()
                .map_or(1, |e| e.code());
            eprintln!("ratelab: check: {err}");
            ExitCode::from(code)
        }
        Err(err) => {
            // Each cause once: see ratelab::errors.
            let mut messages = ratelab::errors::messages(err.chain()).into_iter();
            eprintln!("ratelab: error: {}", messages.next().unwrap_or_default());
            for cause in messages {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}
