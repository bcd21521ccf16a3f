/**
 * Parameters (docs/toolkits.md, "Choices from another endpoint" and "Secret fields"), one entry list:
 * - choices-from.ts   `field_rules.<field>.choices_from`: its schema, its compile, and which endpoints can answer choices
 * - field-choices.ts  a field's choices asked of their endpoint as the caller, cached per caller and args
 * - secret-fields.ts  `secret: true`: `***` wherever a payload's fields are kept, the value in the gateway's mask
 * The request path uses them at step 4 (pipeline/step-4-payload-filter.ts) and in GET {base}/choices
 * (pipeline/choices-route.ts); the console's forms read them from openapi.json (openapi/request-schemas.ts).
 */
export {
  choicesFromSchema,
  compileChoicesFrom,
  choiceSourceProblem,
  type ChoiceSourceCandidate,
  type CompiledChoicesFrom,
  type ChoicesFromConfig,
} from './choices-from.js';
export { FieldChoices, choiceArgs, isChoice, type Choice, type ChoicesAsker, type ChoicesCaller } from './field-choices.js';
export { keptFields, holdSecretValues, secretKeyProblem } from './secret-fields.js';
