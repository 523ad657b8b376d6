/**
 * Unleash flags as OpenFeature evaluations: the one mapping the OFREP routes and the in-process
 * OpenFeature provider share (the table is in docs/openfeature.md). Pure: no I/O, no HTTP.
 *
 * A flag's value type comes from its definition, never from the context: OpenFeature clients
 * check the value's type against the caller's default, so a type that changed from user to user
 * would flip a `getStringValue` between a value and `TYPE_MISMATCH`.
 */
import type { ToggleResult } from '../../core/service.js';
import type { FeatureDefinition } from '../../evaluation/types.js';

/** The OpenFeature type of a flag's value. */
export type OfrepValueType = 'boolean' | 'string' | 'number' | 'object';

/** Why a flag has its value (OFREP's `reason`). */
export type OfrepReason = 'DISABLED' | 'TARGETING_MATCH' | 'SPLIT';

/** A successful evaluation of one flag. `value` is absent when the caller's default applies. */
export interface OfrepSuccess {
  key: string;
  value?: boolean | string | number | object;
  reason: OfrepReason;
  variant: string;
  metadata: { enabled: boolean; payloadType?: string };
}

/** An evaluation that failed: the flag is known, its payload is not of the flag's type. */
export interface OfrepFailure {
  key: string;
  errorCode: 'PARSE_ERROR';
  errorDetails: string;
}

/** One flag's evaluation, as an entry of the bulk answer (or the body of the single one). */
export type OfrepEvaluation = OfrepSuccess | OfrepFailure;

interface PayloadHolder {
  payload?: { type?: string; value?: string } | null;
}

const TYPES: Readonly<Record<string, OfrepValueType>> = { string: 'string', csv: 'string', number: 'number', json: 'object' };

/** Types decided per definition object: each flag-set change brings new objects, so once per revision. */
const decided = new WeakMap<FeatureDefinition, OfrepValueType>();

function firstPayloadType(variants: readonly PayloadHolder[] | undefined): OfrepValueType | undefined {
  for (const variant of variants ?? []) {
    const type = variant.payload?.type;
    if (type !== undefined) return TYPES[type] ?? 'string';
  }
  return undefined;
}

/**
 * The value type of a flag: `boolean` when no variant (of the flag or of any strategy) carries a
 * payload, else the type of the first payload found: `string` and `csv` → string, `number` →
 * number, `json` → object.
 */
export function valueTypeOf(definition: FeatureDefinition): OfrepValueType {
  let type = decided.get(definition);
  if (type === undefined) {
    type = firstPayloadType(definition.variants as PayloadHolder[] | undefined);
    for (const strategy of definition.strategies ?? []) {
      type ??= firstPayloadType((strategy as { variants?: PayloadHolder[] }).variants);
    }
    type ??= 'boolean';
    decided.set(definition, type);
  }
  return type;
}

function reasonOf(definition: FeatureDefinition, toggle: ToggleResult): OfrepReason {
  if (!definition.enabled) return 'DISABLED';
  return toggle.variant.enabled ? 'SPLIT' : 'TARGETING_MATCH';
}

function parsePayload(type: OfrepValueType, value: string): string | number | object | undefined {
  if (type === 'string') return value;
  if (type === 'number') {
    const parsed = value.trim() === '' ? Number.NaN : Number(value);
    return Number.isFinite(parsed) ? parsed : undefined;
  }
  try {
    const parsed: unknown = JSON.parse(value);
    return typeof parsed === 'object' && parsed !== null ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/**
 * One toggle's evaluation as OFREP answers it. A boolean flag always has a `value` (whether it
 * is on); a payload flag has one only when it is on and its variant carries a payload, otherwise
 * the caller's default applies. A payload that does not parse as the flag's type is a
 * `PARSE_ERROR`.
 */
export function ofrepEvaluation(definition: FeatureDefinition, toggle: ToggleResult): OfrepEvaluation {
  const type = valueTypeOf(definition);
  const reason = reasonOf(definition, toggle);
  const { variant } = toggle;
  if (type === 'boolean') return { key: toggle.name, value: toggle.enabled, reason, variant: variant.name, metadata: { enabled: toggle.enabled } };
  const payload = variant.payload;
  if (!toggle.enabled || payload === undefined) return { key: toggle.name, reason, variant: variant.name, metadata: { enabled: toggle.enabled } };
  const value = parsePayload(type, payload.value);
  if (value === undefined) {
    return {
      key: toggle.name,
      errorCode: 'PARSE_ERROR',
      errorDetails: `The payload of variant "${variant.name}" (${payload.type}) is not a ${type}, the type of this flag`,
    };
  }
  return { key: toggle.name, value, reason, variant: variant.name, metadata: { enabled: true, payloadType: payload.type } };
}

/** Whether an evaluation failed. */
export function isFailure(evaluation: OfrepEvaluation): evaluation is OfrepFailure {
  return 'errorCode' in evaluation;
}

/** Why a context was refused (OFREP's `INVALID_CONTEXT`). */
export class InvalidContext extends Error {}

/**
 * An OpenFeature evaluation context as the raw context the proxy builds from a request or an
 * in-process call: `targetingKey` becomes `field` (`userId` unless configured otherwise) and wins
 * over a `field` sent as well; every other key is taken as `/proxy` takes it (known fields stay,
 * others become properties). `undefined` is the empty context.
 * @throws InvalidContext when the context is not an object, or `targetingKey` not a string.
 */
export function unleashContextOf(context: unknown, field: string): Record<string, unknown> {
  if (context === undefined || context === null) return {};
  if (typeof context !== 'object' || Array.isArray(context)) throw new InvalidContext('The context must be an object');
  const { targetingKey, ...rest } = context as Record<string, unknown>;
  if (targetingKey === undefined || targetingKey === null) return rest;
  if (typeof targetingKey !== 'string' && typeof targetingKey !== 'number') throw new InvalidContext('targetingKey must be a string');
  rest[field] = String(targetingKey);
  return rest;
}
