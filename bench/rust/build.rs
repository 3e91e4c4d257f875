//! Writes `decode_type`, the decode of a value into the generated Rust type of the type it is
//! named as, for every type of the generated crate: the names are read from the crate's
//! `registry::round_trip`, which lists them all, so that the benchmark follows the schemas.

use std::env;
use std::fs;
use std::path::Path;

const REGISTRY: &str = "../../test/languages/rust/agent_gateway/src/registry.rs";

fn main() {
    println!("cargo:rerun-if-changed={REGISTRY}");
    let registry =
        fs::read_to_string(REGISTRY).unwrap_or_else(|error| panic!("reading {REGISTRY}: {error}"));
    let names: Vec<&str> = registry
        .lines()
        .filter_map(|line| {
            let rest = line.trim().strip_prefix('"')?;
            let (name, arm) = rest.split_once('"')?;
            arm.trim_start()
                .starts_with("=> trip::<types::")
                .then_some(name)
        })
        .collect();
    assert!(
        !names.is_empty(),
        "{REGISTRY}: no `\"Type\" => trip::<types::Type>` arm found in round_trip"
    );
    let mut code = String::from(
        "/// Decodes `value` into the generated Rust type named `type_name` and drops it; `None` when\n\
         /// the crate has no such type.\n\
         fn decode_type(type_name: &str, value: &Json) -> Option<Result<(), DecodeError>> {\n    \
         Some(match type_name {\n",
    );
    for name in &names {
        code.push_str(&format!("        \"{name}\" => from_json::<types::{name}>(value).map(|typed| {{ black_box(&typed); }}),\n"));
    }
    code.push_str("        _ => return None,\n    })\n}\n");
    let out = Path::new(&env::var("OUT_DIR").expect("OUT_DIR is set by cargo")).join("decoders.rs");
    fs::write(&out, code).unwrap_or_else(|error| panic!("writing {}: {error}", out.display()));
}
