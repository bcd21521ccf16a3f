import { expect } from 'chai';
import { coreModule } from '../../support/core-module.js';

const { subjectMatches } = await coreModule<typeof import('../../../packages/core/src/auth/jwt/subject-match.js')>('auth/jwt/subject-match.js');
const { looksLikeJwt } = await coreModule<typeof import('../../../packages/core/src/auth/jwt/jwt-issuers.js')>('auth/jwt/jwt-issuers.js');

describe('unit: workload token subjects and shape', () => {
  const subjects = ['repo:acme/app:ref:refs/heads/main', 'repo:acme/tools*', 'system:serviceaccount:ops:*'];

  it('matches a subject exactly, or by the text before a final *', () => {
    expect(subjectMatches('repo:acme/app:ref:refs/heads/main', subjects)).to.equal(true);
    expect(subjectMatches('repo:acme/app:ref:refs/heads/main2', subjects)).to.equal(false);
    expect(subjectMatches('repo:acme/app:ref:refs/heads/mai', subjects)).to.equal(false);
    expect(subjectMatches('repo:acme/tools', subjects)).to.equal(true);
    expect(subjectMatches('repo:acme/tools-cli:ref:refs/tags/v1', subjects)).to.equal(true);
    expect(subjectMatches('repo:acme/tool', subjects)).to.equal(false);
    expect(subjectMatches('system:serviceaccount:ops:deployer', subjects)).to.equal(true);
    expect(subjectMatches('system:serviceaccount:opsx:deployer', subjects)).to.equal(false);
    expect(subjectMatches('', subjects)).to.equal(false);
  });

  it('tells a JWT from a session token and an API key by its dots alone', () => {
    expect(looksLikeJwt('eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln')).to.equal(true);
    expect(looksLikeJwt('eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.')).to.equal(true); // alg none: still checked (and refused), so it is logged
    expect(looksLikeJwt('a'.repeat(43))).to.equal(false);
    expect(looksLikeJwt(`tkg_${'a'.repeat(43)}`)).to.equal(false);
    expect(looksLikeJwt('a.b')).to.equal(false);
    expect(looksLikeJwt('a.b.c.d')).to.equal(false);
  });
});
