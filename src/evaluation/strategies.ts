/** Names of the activation strategies unleash-client evaluates built in, reported upstream at registration. */
export const defaultStrategyNames = [
  'default',
  'applicationHostname',
  'gradualRolloutRandom',
  'gradualRolloutSessionId',
  'gradualRolloutUserId',
  'remoteAddress',
  'userWithId',
  'flexibleRollout',
] as const;
