//! A gateway of the agent-gateway protocol written in Rust on the crate turnspec generates
//! from the protocol's schemas (agent_gateway): the generated server over stdio, one
//! OpenAI-compatible model, the three reference tools and supervised approvals, everything in
//! memory. It claims two capabilities, core and permissions; the methods of the others are
//! answered method_not_found.
//!
//! ```text
//! cargo build --release
//! target/release/gateway --provider-url http://127.0.0.1:8080/v1
//! turnspec certify --gateway-cmd "examples/gateways/rust/target/release/gateway --provider-url {provider_url}" --capabilities core,permissions
//! ```

mod gateway;
mod model;
mod permissions;
mod stamps;
mod tools;
mod turn;

use std::sync::Arc;

use agent_gateway::jsonrpc::transport::stdio;
use agent_gateway::serve;

use crate::gateway::Gateway;
use crate::model::Provider;

fn usage() -> ! {
    eprintln!("usage: gateway --provider-url URL [--model NAME]");
    std::process::exit(2)
}

#[tokio::main]
async fn main() {
    let mut provider_url = std::env::var("TURNSPEC_PROVIDER_URL").ok();
    let mut model = "rust-gateway-model".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--provider-url" => provider_url = Some(args.next().unwrap_or_else(|| usage())),
            "--model" => model = args.next().unwrap_or_else(|| usage()),
            _ => usage(),
        }
    }
    let Some(provider_url) = provider_url else {
        usage()
    };
    let provider = match Provider::parse(&provider_url) {
        Ok(provider) => provider,
        Err(problem) => {
            eprintln!("gateway: {problem}");
            std::process::exit(2)
        }
    };
    let connection = serve(stdio(), Arc::new(Gateway::new(provider, model)));
    // Standard input ended: the client is gone, and so is the gateway.
    connection.connection().closed().await;
}
