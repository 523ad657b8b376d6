/** swagger-ui-dist ships no types; this is the one file of it the proxy imports. */
declare module 'swagger-ui-dist/absolute-path.js' {
  /** The absolute path of the installed swagger-ui-dist directory. */
  const getAbsoluteFSPath: () => string;
  export default getAbsoluteFSPath;
}
