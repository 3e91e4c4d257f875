/** Handler of the answer to a question the model asked. */
import type { Handlers } from "@turnspec/protocol/server";
import type { Connection } from "../views/connections.js";
import type { Questions } from "../flows/questions.js";

export type QuestionMethods = "turn/question/respond";

export function questionHandlers(questions: Pick<Questions, "respond">): Pick<Handlers<Connection>, QuestionMethods> {
  return { "turn/question/respond": (params) => questions.respond(params) };
}
