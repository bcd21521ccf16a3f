// The CLI's did-you-mean is core's, shared with toolkit and server config diagnostics.
export { nearest } from '@tkgate/core';
