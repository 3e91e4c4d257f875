//! Reads the validation benchmark's corpus (bench/corpus.ts: one JSON object per line,
//! `{"kind", "type", "text"}`) and measures, per message, what a Rust peer of the protocol
//! does with a frame: parse it (`jsonrpc::json::parse`), validate its payload strictly with the
//! generated validators, and decode the payload into its generated Rust type. It prints one
//! JSON object: the median nanoseconds per message of each stage over the rounds, timed on the
//! process's CPU clock (as the TypeScript and Go sides are: on a shared machine the wall clock
//! would also count the time other processes hold the cores).
//!
//! ```text
//! cargo run --release -p bench-rust -- CORPUS-FILE [ROUNDS]
//! ```

use std::hint::black_box;
use std::process::ExitCode;
use std::{env, fs};

use agent_gateway::jsonrpc::json::{from_json, parse, DecodeError};
use agent_gateway::{types, validators, Json, Mode};
use serde::Deserialize;

include!(concat!(env!("OUT_DIR"), "/decoders.rs"));

#[derive(Deserialize)]
struct Message {
    kind: String,
    #[serde(rename = "type")]
    type_name: String,
    text: String,
}

const STAGES: [&str; 3] = ["parse", "parse+validate", "parse+validate+decode"];

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bench/rust: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = env::args().skip(1).collect();
    let Some(file) = args.first() else {
        return Err("usage: bench-rust CORPUS-FILE [ROUNDS]".to_owned());
    };
    let rounds = match args.get(1) {
        None => 15,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("ROUNDS must be a positive integer, not {text:?}"))?,
    };
    let text = fs::read_to_string(file).map_err(|error| format!("{file}: {error}"))?;
    let mut corpus = Vec::new();
    for (index, line) in text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.is_empty())
    {
        let message: Message =
            serde_json::from_str(line).map_err(|error| format!("{file}:{}: {error}", index + 1))?;
        corpus.push(message);
    }
    if corpus.is_empty() {
        return Err(format!("{file}: no messages"));
    }

    // Every message must be valid and decode: the benchmark measures the success path.
    for (index, message) in corpus.iter().enumerate() {
        let value = parse(&message.text).map_err(|error| format!("message {index}: {error}"))?;
        let payload = payload(&value, &message.kind);
        let where_ = || format!("message {index} ({})", message.type_name);
        match validators::validate(&message.type_name, payload, Mode::Strict) {
            None => return Err(format!("{}: the crate has no such type", where_())),
            Some(Err(error)) => return Err(format!("{}: {error}", where_())),
            Some(Ok(())) => {}
        }
        match decode_type(&message.type_name, payload) {
            None => return Err(format!("{}: no decoder for the type", where_())),
            Some(Err(error)) => return Err(format!("{}: {error}", where_())),
            Some(Ok(())) => {}
        }
    }

    // Stage 0 parses, 1 also validates, 2 also decodes.
    let stage = |stage: usize| {
        for message in &corpus {
            let value = black_box(parse(&message.text));
            if stage == 0 {
                continue;
            }
            let Ok(value) = value else { continue };
            let payload = payload(&value, &message.kind);
            black_box(validators::validate(
                &message.type_name,
                payload,
                Mode::Strict,
            ));
            if stage == 2 {
                black_box(decode_type(&message.type_name, payload));
            }
        }
    };
    for index in 0..STAGES.len() {
        stage(index); // warm up
    }
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); STAGES.len()];
    for _ in 0..rounds {
        for (index, stage_samples) in samples.iter_mut().enumerate() {
            let start = cpu_time()?;
            stage(index);
            stage_samples.push((cpu_time()? - start) as f64 / corpus.len() as f64);
        }
    }
    let mut out = serde_json::Map::new();
    out.insert("messages".to_owned(), corpus.len().into());
    out.insert("rounds".to_owned(), rounds.into());
    for (name, mut xs) in STAGES.iter().zip(samples) {
        xs.sort_by(f64::total_cmp);
        out.insert((*name).to_owned(), xs[xs.len() / 2].into());
    }
    println!("{}", serde_json::Value::Object(out));
    Ok(())
}

/// The payload a validator sees: the result of a response, the params of anything else.
fn payload<'a>(value: &'a Json, kind: &str) -> &'a Json {
    const ABSENT: &Json = &Json::Null;
    value
        .get(if kind == "response" {
            "result"
        } else {
            "params"
        })
        .unwrap_or(ABSENT)
}

/// The CPU time this process has used, user and system, in nanoseconds.
fn cpu_time() -> Result<i64, String> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage writes a whole rusage into the pointer it is given when it returns 0.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return Err(format!("getrusage: {}", std::io::Error::last_os_error()));
        }
        usage.assume_init()
    };
    let nanos = |t: libc::timeval| t.tv_sec * 1_000_000_000 + t.tv_usec * 1_000;
    Ok(nanos(usage.ru_utime) + nanos(usage.ru_stime))
}
