import { forbidden } from '../errors.js';
import type { PipelineStep } from './pipeline-step.js';

/** Step 3: the caller's power (read fresh this request) reaches the endpoint's min_power, else 403. */
export const permissionStep: PipelineStep = (ctx) => {
  const { minPower } = ctx.state.endpoint!;
  if (ctx.state.caller!.power < minPower) throw forbidden(`this endpoint needs power ${minPower}`);
};
