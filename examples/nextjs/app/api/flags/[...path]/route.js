/** The proxy under /api/flags (`/api/flags/proxy`, …), through the fetch adapter. */
import { flags } from '../../../../lib/flags';

/** @param {Request} request */
async function handle(request) {
  return (await flags())(request);
}

export const GET = handle;
export const POST = handle;
export const OPTIONS = handle;
export const HEAD = handle;
// Every request is evaluated: nothing here may be cached at build time.
export const dynamic = 'force-dynamic';
